"""Git sync: the workspace as a git repository, pushed to and pulled from a remote.

* :mod:`signet.gitsync.urls`  which remote URLs are accepted, and git run without surprises
* :mod:`signet.gitsync.repo`  making the workspace a repository (``.gitignore``, first commit)
* :mod:`signet.gitsync.sync`  status, pull, push, sync, the remote's configuration
"""
