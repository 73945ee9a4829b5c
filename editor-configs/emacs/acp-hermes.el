;;; acp-hermes.el --- acp-hermes for agent-shell  -*- lexical-binding: t; -*-
;; Replace /ABSOLUTE/PATH/TO/acp-hermes with your checkout, then M-x agent-shell.
(require 'agent-shell)

(defun acp-hermes-agent-shell-config ()
  (agent-shell-make-agent-config
   :identifier 'acp-hermes
   :mode-line-name "acp-hermes"
   :buffer-name "acp-hermes"
   :shell-prompt "hermes> "
   :shell-prompt-regexp "hermes> "
   :client-maker (lambda (buffer)
                   (agent-shell--make-acp-client
                    :command "/ABSOLUTE/PATH/TO/acp-hermes/.venv/bin/acp-hermes"
                    :command-params '()
                    :environment-variables (list (concat "ANTHROPIC_API_KEY=" (getenv "ANTHROPIC_API_KEY")))
                    :context-buffer buffer))))

(add-to-list 'agent-shell-agent-configs (acp-hermes-agent-shell-config) t)

(provide 'acp-hermes)
;;; acp-hermes.el ends here
