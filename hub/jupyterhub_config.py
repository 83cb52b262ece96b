# JupyterHub configuration for cube-lab: everything comes from one settings file,
# hub/cube_hub.yaml (or $CUBE_HUB_SETTINGS). Start it with `make hub`.
from cube_lab.hub.config import configure
from cube_lab.hub.settings import load

c = get_config()  # noqa: F821 - provided by JupyterHub when it runs this file
configure(c, load())
