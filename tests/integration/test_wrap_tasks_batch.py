"""A batch's answers stay under the frame cap: an offered task's finished result is served from memory, so a batch
of `tasks/result` for one task answered it once per request in one JSON body. Attacked as any local process on
the front: its own task whose result is 1 MiB (the raw server's `echo`), then one POST of 200 `tasks/result` for
it (8 KiB) took a 200 MiB answer, built in memory at once (a 16 MiB body holds 200,000 of them). Now the answers
past 16 MiB (`[front] max_body_mb`) are each one clear error."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from front_tools import listening_wrapper, rpc
from test_wrap_tasks_sessions import TaskHost

pytestmark = pytest.mark.anyio
MIB = 1024 * 1024


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_a_batch_of_results_of_one_task_stays_under_the_frame_cap(tmp_path: Path) -> None:
    wrapper = listening_wrapper(tmp_path, config='[tasks]\noffer = ["echo"]\n')
    async with wrapper as front, httpx2.AsyncClient(timeout=60) as http:
        host = await TaskHost(http, front, "anyone").open()
        call = {"name": "echo", "arguments": {"blob": "x" * MIB}, "task": {"ttl": 600000}}
        task_id = (await host.call("tools/call", call))["result"]["task"]["taskId"]
        first = await host.call("tasks/result", {"taskId": task_id})
        assert len(json.dumps(first)) > MIB
        batch = [rpc(n, "tasks/result", {"taskId": task_id}) for n in range(200)]
        reply = await http.post(front.url, json=batch, headers=host.headers)
        assert reply.status_code == 200
        assert len(reply.content) <= 16 * MIB + 64 * 1024, f"{len(reply.content)} bytes answered"
        answers = reply.json()
        assert sorted(a["id"] for a in answers) == list(range(200))  # every request answered once
        whole = [a for a in answers if "result" in a]
        cut = [a for a in answers if "error" in a]
        assert 10 <= len(whole) <= 16 and len(whole) + len(cut) == 200
        assert all("16 MiB ([front] max_body_mb)" in a["error"]["message"] for a in cut)
        again = await host.call("tasks/result", {"taskId": task_id})  # the wrapper is well, the task is there
        assert again["result"] == first["result"]
