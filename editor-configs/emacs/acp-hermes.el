;;; acp-hermes.el --- acp-hermes as an agent-shell agent  -*- lexical-binding: t; -*-

;;; Commentary:

;; Registers acp-hermes with agent-shell (https://github.com/xenodium/agent-shell, built on
;; acp.el).  Install agent-shell, replace /ABSOLUTE/PATH/TO/acp-hermes below with your checkout,
;; load this file from your init file, then run M-x agent-shell and pick "acp-hermes" (or set
;; `agent-shell-preferred-agent-config' to 'acp-hermes to skip the picker).
;;
;; The agent inherits Emacs's environment: acp.el puts the variables given here in front of
;; `process-environment'.  So an exported ANTHROPIC_API_KEY reaches it, and without one it uses
;; the key saved by `acp-hermes setup'.  Add entries such as "ANTHROPIC_API_KEY=sk-ant-..." to
;; `acp-hermes-environment' only to override what Emacs has.

;;; Code:

(require 'agent-shell)

(defvar acp-hermes-command '("/ABSOLUTE/PATH/TO/acp-hermes/.venv/bin/acp-hermes")
  "The acp-hermes command and its arguments.
The default is the console script the install created; with the
published package, \\='(\"uvx\" \"acp-hermes\") works too.")

(defvar acp-hermes-environment nil
  "Extra \"NAME=value\" strings for the acp-hermes process.
Leave it nil to pass on Emacs's environment unchanged.")

(defvar acp-hermes-default-mode "default"
  "The session mode to start in: default, accept-edits, plan or bypass.")

(defun acp-hermes-agent-shell-config ()
  "Return the agent-shell configuration that runs acp-hermes."
  (agent-shell-make-agent-config
   :identifier 'acp-hermes
   :mode-line-name "acp-hermes"
   :buffer-name "acp-hermes"
   :shell-prompt "hermes> "
   :shell-prompt-regexp "hermes> "
   ;; Needs an agent-shell release with session-mode defaults (current ones have it); on an
   ;; older release, delete this line.
   :default-session-mode-id (lambda () acp-hermes-default-mode)
   :install-instructions "Set `acp-hermes-command' to your checkout's .venv/bin/acp-hermes."
   :client-maker (lambda (buffer)
                   (agent-shell--make-acp-client
                    :command (car acp-hermes-command)
                    :command-params (cdr acp-hermes-command)
                    :environment-variables acp-hermes-environment
                    :context-buffer buffer))))

(add-to-list 'agent-shell-agent-configs (acp-hermes-agent-shell-config) t)

(provide 'acp-hermes)
;;; acp-hermes.el ends here
