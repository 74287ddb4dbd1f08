"""`arbor sql` on a terminal is an interactive shell whose history outlives
it (docs/cli.md: "line editing, history in ~/.arbor_history"): run under a
pseudo-terminal, a statement typed in one session is in the history file
after it, and the next session recalls it with the up arrow and runs it."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time


class Terminal:
    """`arbor sql` on the slave side of a pseudo-terminal, typed to from the master side."""

    def __init__(self, binary: str, home) -> None:
        self.master, slave = pty.openpty()
        env = {**os.environ, "HOME": str(home), "TERM": "xterm"}
        self.process = subprocess.Popen([binary, "sql"], stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
        os.close(slave)
        self.seen = b""
        self.cursor = 0  # where the last text waited for ended

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def wait_for(self, text: bytes, timeout: float = 60.0) -> None:
        """Reads the screen until `text` shows after the last text waited for."""
        start = self.cursor
        deadline = time.monotonic() + timeout
        while text not in self.seen[start:]:
            left = deadline - time.monotonic()
            assert left > 0, f"{text!r} never showed; the screen read {self.seen[start:]!r}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # the shell exited: nothing more will come
                    chunk = b""
                assert chunk, f"the shell exited before {text!r}; the screen read {self.seen[start:]!r}"
                self.seen += chunk
        self.cursor = self.seen.index(text, start) + len(text)

    def quit(self) -> None:
        self.type(b"\\q\r")
        assert self.process.wait(timeout=30) == 0
        os.close(self.master)


def test_the_shell_keeps_its_history_across_sessions(arbor_binary, tmp_path):
    first = Terminal(arbor_binary, tmp_path)
    first.wait_for(b"arbor> ")
    first.type(b"SELECT 6 * 7 AS answer;\r")
    first.wait_for(b"42")
    first.wait_for(b"arbor> ")
    first.quit()
    history = (tmp_path / ".arbor_history").read_text()
    assert "SELECT 6 * 7 AS answer;" in history.splitlines()

    # A new session: the up arrow brings the statement back, Enter runs it.
    second = Terminal(arbor_binary, tmp_path)
    second.wait_for(b"arbor> ")
    second.type(b"\x1b[A")
    second.wait_for(b"SELECT 6 * 7 AS answer;")
    second.type(b"\r")
    second.wait_for(b"42")
    second.wait_for(b"arbor> ")
    second.quit()
