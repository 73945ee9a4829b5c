-- CodeCompanion.nvim: acp-hermes as a custom ACP adapter.
--
-- Put this in your Neovim config (or merge the `adapters.acp.acp_hermes` entry into your own
-- `require("codecompanion").setup({...})`), replace /ABSOLUTE/PATH/TO/acp-hermes with your
-- checkout, then open a chat with :CodeCompanionChat.
--
-- CodeCompanion gives the agent file reads and writes through your buffers, permission prompts
-- with a diff preview, sessions, modes and config options; it has no ACP terminals, so acp-hermes
-- runs commands itself (inside its sandbox, after asking).
require("codecompanion").setup({
  adapters = {
    acp = {
      acp_hermes = function()
        local helpers = require("codecompanion.adapters.acp.helpers")
        return {
          name = "acp_hermes",
          formatted_name = "acp-hermes",
          type = "acp",
          roles = { llm = "assistant", user = "user" },
          -- The console script the install created. With the published package you can use
          -- { "uvx", "acp-hermes" } instead.
          commands = { default = { "/ABSOLUTE/PATH/TO/acp-hermes/.venv/bin/acp-hermes" } },
          -- No `env` table: the agent inherits Neovim's environment, so an exported
          -- ANTHROPIC_API_KEY reaches it, and without one it uses the key saved by
          -- `acp-hermes setup`. Do not write `env = { ANTHROPIC_API_KEY = "ANTHROPIC_API_KEY" }`:
          -- CodeCompanion passes that string itself as the key whenever the variable is unset.
          -- To read the key from a password manager, CodeCompanion's `cmd:` form works:
          --   env = { ANTHROPIC_API_KEY = "cmd:op read op://personal/Anthropic/credential --no-newline" },
          defaults = {
            mcpServers = {},
            timeout = 20000, -- ms to wait for the agent to start and answer
            -- Applied after session/new. Keys are option categories, values are acp-hermes's ids:
            --   mode: default | accept-edits | plan | bypass
            --   thought_level: off | low | medium | high
            session_config_options = { mode = "default", thought_level = "off" },
          },
          parameters = {
            protocolVersion = 1,
            clientCapabilities = { fs = { readTextFile = true, writeTextFile = true } },
            clientInfo = { name = "CodeCompanion.nvim", version = "1.0.0" },
          },
          handlers = {
            setup = function(self)
              return true
            end,
            -- Skip ACP `authenticate`: acp-hermes reads its key at start-up and, without one,
            -- answers session/new with an "auth required" error that says what to run.
            auth = function(self)
              return true
            end,
            form_messages = function(self, messages, capabilities)
              return helpers.form_messages(self, messages, capabilities)
            end,
            on_exit = function(self, code) end,
          },
        }
      end,
    },
  },
  interactions = { chat = { adapter = "acp_hermes" } },
})
