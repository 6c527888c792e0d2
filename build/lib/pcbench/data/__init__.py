"""Training and validation data for the verl backend: Hugging Face datasets -> verl parquet.

`python -m pcbench.data.prepare NAME [NAME ...] --out DIR` writes DIR/NAME.parquet in verl's
RL schema; `check_data_files` is what a run calls first, so a missing file fails in one line
that names the command preparing it.
"""

from pcbench.data.specs import PROMPT_TEMPLATE, SPECS, DatasetSpec, get_spec
from pcbench.data.files import MissingDataError, check_data_files, prepare_command

__all__ = ["PROMPT_TEMPLATE", "SPECS", "DatasetSpec", "MissingDataError", "check_data_files", "get_spec",
           "prepare_command"]
