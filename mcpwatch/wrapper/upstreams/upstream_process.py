"""How a stdio upstream's processes are started and ended so that none of them outlives the wrapper.

The server is started in a session (and process group) of its own; whatever way it ends, what is left of its group
is ended with it (`end_process_group`). That covers a wrapper that lives to clean up. For a wrapper killed outright
(SIGKILL, the OOM killer), on Linux the server is started through a tiny exec shim that:

- asks the kernel to send the server SIGTERM when the wrapper dies (PR_SET_PDEATHSIG, which survives exec but covers
  only the server itself);
- leaves a keeper in the group: a `/bin/sh` (1.6 MB resident, 0.3 MB of it its own), detached (its parent exits at
  once, so the server never sees it as its child), that blocks reading a lifeline pipe whose write end only the
  wrapper holds. When the wrapper dies the kernel closes that end; the keeper reads end-of-file and ends the whole
  group (SIGTERM, SIGKILL a second later), the server's own children with it. It holds none of the server's
  pipes, and costs nothing per frame: frames go between the wrapper and the server directly.
- exec()s the server in place, so the server keeps the shim's pid and the wrapper stays its parent. It also closes
  every descriptor but 0, 1 and 2, as a spawn with close_fds would.

A process that leaves the group (`setsid`, a daemon's double fork) is out of reach of both: it is the server's to end.

(A preexec_fn cannot do this: Python code between fork and exec in a threaded process can deadlock or abort.)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys

GROUP_GRACE_S = 1.0  # what is left of the process group after the server: SIGTERM, then SIGKILL after this

# Runs as `sh -c KEEPER` with the lifeline on descriptor 3: blocks until the wrapper is gone (end-of-file), then ends
# its own process group. SIGTERM ends the keeper itself until then (the wrapper ends the group when it stops the
# server); afterwards it is ignored, so the keeper lives to send the SIGKILL.
KEEPER = "read _ <&3; trap '' TERM; kill -TERM 0; sleep 1; kill -KILL 0"
_EXEC_SHIM = f"""\
import ctypes,os,sys
wrapper,lifeline,argv=int(sys.argv[1]),int(sys.argv[2]),sys.argv[3:]
def close_from(low):
 for f in map(int,os.listdir('/proc/self/fd')):
  if f>=low:
   try:os.close(f)
   except OSError:pass
ctypes.CDLL(None).prctl(1,15)
if os.getppid()!=wrapper:os._exit(1)
middle=os.fork()
if middle==0:
 try:
  if os.fork()==0:
   os.chdir('/')
   null=os.open(os.devnull,os.O_RDWR)
   for f in(0,1,2):os.dup2(null,f)
   os.dup2(lifeline,3)
   close_from(4)
   os.execv('/bin/sh',['mcpwatch-keeper','-c',{KEEPER!r}])
 finally:os._exit(0)
os.waitpid(middle,0)
close_from(3)
os.execvp(argv[0],argv)
"""
# Line by line: PR_SET_PDEATHSIG (1) with SIGTERM (15); a wrapper that died before the signal was armed means no
# server at all; the keeper is the grandchild (descriptors: /dev/null, and the lifeline as 3; nothing else, so it
# holds none of the server's pipes); uvloop leaves copies of the pipes open in the child: with them a server that
# closes its stdout would not close it at all.


class Launch:
    """How one stdio upstream process is started: its command line, the descriptors it inherits, and (Linux) the
    lifeline's write end the wrapper holds while the process runs."""

    def __init__(self, argv: list[str]) -> None:
        self._read: int | None = None
        self._write: int | None = None
        if not sys.platform.startswith("linux"):
            self.argv = argv
            self.pass_fds: tuple[int, ...] = ()
            return
        self._read, self._write = os.pipe()  # both close-on-exec: no other child inherits the write end
        self.argv = [sys.executable, "-I", "-S", "-c", _EXEC_SHIM, str(os.getpid()), str(self._read), *argv]
        self.pass_fds = (self._read,)

    def started(self) -> None:
        """The process has its copy of the read end (or was never started): the wrapper's is of no use."""
        if self._read is not None:
            os.close(self._read)
            self._read = None

    def ended(self) -> None:
        """The process and its group are gone: the keeper (if still there) may go too."""
        self.started()
        if self._write is not None:
            os.close(self._write)
            self._write = None


async def end_process_group(pgid: int, grace_s: float = GROUP_GRACE_S) -> None:
    """End what is left of a process group once its leader (the server) is gone: a grandchild must not outlive it.

    The group's id is the server's pid (it was started in a session of its own); SIGTERM first, SIGKILL for what
    is still there after `grace_s`."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return  # nothing left (or no longer ours)
        if sig == signal.SIGKILL:
            return
        deadline = loop.time() + grace_s
        while loop.time() < deadline:
            await asyncio.sleep(0.02)
            if not _group_alive(pgid):
                return


def _group_alive(pgid: int) -> bool:
    """Whether any process of the group is still running (zombies waiting for their reaper do not count)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        names = os.listdir("/proc")
    except OSError:
        return True
    for name in names:
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
                return True
    return False
