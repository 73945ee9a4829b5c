-- CodeCompanion.nvim: a custom ACP adapter for acp-hermes.
-- Replace /ABSOLUTE/PATH/TO/acp-hermes with your checkout.
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
          commands = { default = { "/ABSOLUTE/PATH/TO/acp-hermes/.venv/bin/acp-hermes" } },
          defaults = { mcpServers = {}, timeout = 20000 },
          -- No `env` entry: acp-hermes inherits Neovim's ANTHROPIC_API_KEY when it is set, and otherwise
          -- reads the key saved by `acp-hermes setup`. (`env = { ANTHROPIC_API_KEY = "ANTHROPIC_API_KEY" }`
          -- would pass the variable's name as the key whenever the variable is unset.)
          parameters = {
            protocolVersion = 1,
            clientCapabilities = { fs = { readTextFile = true, writeTextFile = true } },
            clientInfo = { name = "CodeCompanion.nvim", version = "1.0.0" },
          },
          handlers = {
            setup = function(self) return true end,
            auth = function(self) return true end,
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
