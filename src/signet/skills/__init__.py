"""Skills: ``skills/<name>/SKILL.md`` folders in the workspace, shared by every harness.

* :mod:`signet.skills.manifest` a skill's name rule and its SKILL.md front matter
* :mod:`signet.skills.archive`  safe extraction of .tar.gz / .zip archives
* :mod:`signet.skills.sources`  where a skill is installed from: a folder, a git URL, an archive
* :mod:`signet.skills.links`    the links in each installed harness's skills folder
* :mod:`signet.skills.meta`     the ``skill_meta`` rows (migration 20): source, use count, decay
* :mod:`signet.skills.models`   the API's shapes
* :mod:`signet.skills.service`  list, show, install, uninstall, search, record a use
"""
