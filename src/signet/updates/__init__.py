"""Updates: whether a newer Signet is on the package index, and installing it with pip.

* :mod:`signet.updates.versions` the installed version and the newest on a PyPI JSON index
* :mod:`signet.updates.models`   the API's shapes
* :mod:`signet.updates.service`  check, install, restart, and the optional scheduled check
"""
