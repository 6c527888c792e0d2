"""Multi-node Ray bootstrap from the Slurm environment: the pure parts (commands, parsing, the
monitor's bookkeeping). The real 2-node runs are tests/slurm/test_multinode*.py."""

import socket

import pytest

from pcbench.backends.verl.cluster import roles
from pcbench.backends.verl.slurm_ray import (RayBootstrapError, RaySpec, SlurmLayout, expand_nodelist,
                                             layout_from_env, port_open, ray_env, ray_start_command, run_worker)


def test_nodelist_expansion_matches_scontrol_show_hostnames():
    assert expand_nodelist("gpu[01-03,07],cpu5") == ["gpu01", "gpu02", "gpu03", "gpu07", "cpu5"]
    assert expand_nodelist("node7") == ["node7"]
    assert expand_nodelist("a[9-11]") == ["a9", "a10", "a11"]


def test_single_node_or_no_slurm_needs_no_bootstrap():
    assert layout_from_env({}) is None
    assert layout_from_env({"SLURM_JOB_NODELIST": "gpu01", "SLURM_JOB_NUM_NODES": "1"}) is None


def test_head_and_worker_commands_block_and_name_their_address():
    env = {"SLURM_JOB_NODELIST": "gpu[01-02]", "SLURM_JOB_NUM_NODES": "2", "SLURM_NODEID": "1",
           "SLURM_GPUS_ON_NODE": "8", "SLURM_JOB_ID": "77"}
    worker = layout_from_env(env)
    assert worker == SlurmLayout(["gpu01", "gpu02"], 1, 8, "77") and not worker.is_head and worker.me == "gpu02"
    spec = RaySpec(num_gpus=8, num_cpus=None, port=6400)
    assert ray_start_command(worker, spec, "10.0.0.2", "10.0.0.1") == [
        "ray", "start", "--block", "--disable-usage-stats", "--node-ip-address=10.0.0.2", "--num-gpus=8",
        "--address=10.0.0.1:6400"]
    head = SlurmLayout(["gpu01", "gpu02"], 0, 8)
    cmd = ray_start_command(head, RaySpec(num_gpus=1, num_cpus=16), "10.0.0.1", "10.0.0.1")
    assert cmd[:6] == ["ray", "start", "--block", "--disable-usage-stats", "--node-ip-address=10.0.0.1",
                       "--num-gpus=1"]
    assert {"--num-cpus=16", "--head", "--port=6379"} <= set(cmd)


def test_token_auth_is_the_same_on_every_node():
    assert ray_env({})["RAY_AUTH_MODE"] == "disabled"  # head and workers alike, whatever ~/.ray holds
    assert ray_env({"RAY_AUTH_MODE": "token"})["RAY_AUTH_MODE"] == "token"


def test_worker_gives_up_on_an_absent_head_within_the_join_timeout():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    layout = SlurmLayout(["localhost", "localhost"], 1, 0, "5")
    with pytest.raises(RayBootstrapError, match=r"node localhost could not reach the Ray head localhost .* within 1 s"):
        run_worker(layout, RaySpec(num_gpus=0, port=port, join_timeout_s=1.0))


def test_port_probe_sees_a_listener_and_its_absence():
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]  # the kernel completes the handshake from the backlog, no accept needed
    assert port_open("127.0.0.1", port)
    srv.close()
    assert not port_open("127.0.0.1", port)


def test_roles_number_fsdp_ranks_as_verl_does():
    actors = [{"name": "abcWorkerDict_1:0", "node": "mn1"}, {"name": "abcWorkerDict_0:0", "node": "mn0"},
              {"name": "vllm_server_1_0", "node": "mn1"}, {"name": "vllm_server_0_0", "node": "mn0"},
              {"name": "TaskRunner", "node": "mn0"}]
    assert roles(actors) == {"fsdp_ranks": {"0": "mn0", "1": "mn1"},
                             "vllm_servers": [{"replica": 0, "node_rank": 0, "node": "mn0"},
                                              {"replica": 1, "node_rank": 0, "node": "mn1"}]}
