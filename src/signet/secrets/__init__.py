"""Secrets an agent can use but never see: an encrypted store under the workspace's
``.secrets/`` and commands run with secrets in their environment, their output redacted.

* :mod:`signet.secrets.names`   what a secret name may be
* :mod:`signet.secrets.keys`    the store's key: the OS keyring, or a 0600 key file
* :mod:`signet.secrets.store`   the encrypted file (AES-256-GCM, a nonce per value, atomic writes)
* :mod:`signet.secrets.redact`  every form of a value a command might print, masked
* :mod:`signet.secrets.commands` the allow-list: which program a run may start
* :mod:`signet.secrets.runner`  one run: environment, timeout, bounded output, process group
* :mod:`signet.secrets.runs`    the ``secret_exec_runs`` rows (audit and job state)
* :mod:`signet.secrets.service` what routes, the CLI and MCP call
"""
