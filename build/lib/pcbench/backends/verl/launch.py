"""The verl side of a run, in the child process the entry supervises (watchdog.py).

    python -m pcbench.backends.verl.launch <run folder>/verl_config.yaml

What `python -m verl.trainer.main_ppo` does with the written config, after setting this
process's environment to the one the config gives every Ray worker (our external modules
appended to VERL_USE_EXTERNAL_MODULES, the CPU platform's variables on CPU), so the driver's
own `import verl` registers the same modules.
"""

from __future__ import annotations

import os
import sys

from omegaconf import DictConfig, OmegaConf

from pcbench.backends.verl.platform import merge_env
from pcbench.backends.verl.watchdog import Heartbeat


def launch(verl: DictConfig) -> None:
    os.environ.update(merge_env(os.environ, verl.ray_kwargs.ray_init.runtime_env.env_vars))
    from verl.trainer.main_ppo import TaskRunnerV1, run_ppo  # after the environment: `import verl` reads it
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config
    from verl.utils.device import auto_set_device

    auto_set_device(verl)
    validate_config(config=verl, use_reference_policy=need_reference_policy(verl), use_critic=need_critic(verl))
    run_ppo(verl, task_runner_class=TaskRunnerV1)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m pcbench.backends.verl.launch VERL_CONFIG.yaml", file=sys.stderr)
        return 2
    verl = OmegaConf.load(argv[0])
    Heartbeat(verl.pcbench.get("run_dir")).beat("start Ray, verl workers and vLLM")
    launch(verl)
    return 0


if __name__ == "__main__":
    sys.exit(main())
