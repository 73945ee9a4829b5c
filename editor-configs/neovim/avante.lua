-- avante.nvim: acp-hermes as an ACP provider.
--
-- Put this in your Neovim config (or merge the `acp_providers["acp-hermes"]` entry into your own
-- `require("avante").setup({...})`), replace /ABSOLUTE/PATH/TO/acp-hermes with your checkout,
-- then pick it with :AvanteSwitchProvider acp-hermes (or keep `provider` below).
require("avante").setup({
  provider = "acp-hermes",
  behaviour = {
    -- avante answers every ACP permission request itself by default (`true`): edits and commands
    -- would run without asking you, whatever acp-hermes's mode. false shows acp-hermes's requests.
    auto_approve_tool_permissions = false,
  },
  acp_providers = {
    ["acp-hermes"] = {
      -- The console script the install created. With the published package you can use
      -- command = "uvx", args = { "acp-hermes" }.
      command = "/ABSOLUTE/PATH/TO/acp-hermes/.venv/bin/acp-hermes",
      args = {},
      -- avante starts the agent with PATH plus exactly these variables, so pass on what acp-hermes
      -- reads. os.getenv returns nil for an unset variable and Lua drops nil entries, so nothing
      -- unset is passed: without ANTHROPIC_API_KEY, acp-hermes uses the key saved by
      -- `acp-hermes setup` (under HOME, or HERMES_HOME when set).
      env = {
        HOME = os.getenv("HOME"),
        HERMES_HOME = os.getenv("HERMES_HOME"),
        ANTHROPIC_API_KEY = os.getenv("ANTHROPIC_API_KEY"),
        ANTHROPIC_BASE_URL = os.getenv("ANTHROPIC_BASE_URL"),
        HERMES_MODEL = os.getenv("HERMES_MODEL"),
        SHELL = os.getenv("SHELL"),
      },
      -- avante calls ACP `authenticate` with this id right after `initialize`, so a missing key
      -- is reported as soon as the agent starts rather than at the first prompt.
      auth_method = "anthropic-api-key",
    },
  },
})
