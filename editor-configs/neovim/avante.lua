-- avante.nvim: acp-hermes as an ACP provider.
-- Replace /ABSOLUTE/PATH/TO/acp-hermes with your checkout.
require("avante").setup({
  provider = "acp-hermes",
  acp_providers = {
    ["acp-hermes"] = {
      command = "/ABSOLUTE/PATH/TO/acp-hermes/.venv/bin/acp-hermes",
      args = {},
      env = { ANTHROPIC_API_KEY = os.getenv("ANTHROPIC_API_KEY") },
    },
  },
})
