"""Job templates: reusable pipeline nodes kept in ``templates/<name>/template.yaml``.

from cube_lab.jobtemplates import TemplateCatalog
catalog = TemplateCatalog()
template = catalog.get("train-sklearn")
params = template.validate_params({"train_path": "data/train.csv", "target": "species"})
argv = template.command(params)
"""

from __future__ import annotations

from .catalog import ENV_TEMPLATE_PATH, TemplateCatalog, TemplateProblem, default_template_dirs
from .contract import ENV_PARAMS, ENV_RUN_ID, ENV_VALUES_FILE, node_env, read_values
from .loader import TEMPLATE_FILE, TemplateLoadError, load_template
from .model import CATEGORIES, JobTemplate, TemplateOutput
from .run import TemplateRun, run_template

__all__ = [
    "CATEGORIES",
    "ENV_PARAMS",
    "ENV_RUN_ID",
    "ENV_TEMPLATE_PATH",
    "ENV_VALUES_FILE",
    "TEMPLATE_FILE",
    "JobTemplate",
    "TemplateCatalog",
    "TemplateLoadError",
    "TemplateOutput",
    "TemplateProblem",
    "TemplateRun",
    "default_template_dirs",
    "load_template",
    "node_env",
    "read_values",
    "run_template",
]
