"""A headless LSP client of the real yaml-language-server (tests/lsp/package.json pins it):
JSON-RPC over the server's stdin and stdout, as an editor speaks it.

Every wait is for a message, bounded by a generous deadline that fails with what was awaited
and what came instead: never a sleep, never a bound on how fast the server is."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

# The npm package tests/lsp/package.json pins, as `npm ci --prefix tests/lsp` installs it.
SERVER_SCRIPT = (Path(__file__).resolve().parent / "lsp" / "node_modules" / "yaml-language-server"
                 / "bin" / "yaml-language-server")
# How long any one answer may take before the test fails: the server starts a Node.js process
# and reads the schema from disk, a second or two on a busy 2-core machine; this is far more.
DEADLINE_SECONDS = 120.0
Message = dict[str, Any]


def server_missing() -> str | None:
    """Why the server cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not on PATH"
    if not SERVER_SCRIPT.is_file():
        return "yaml-language-server is not installed: npm ci --prefix tests/lsp"
    return None


def frame(message: Message) -> bytes:
    """A message as LSP sends it: a Content-Length header, then the JSON body."""
    body = json.dumps(message).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def read_frame(stream: IO[bytes]) -> Message | None:
    """The next message on `stream`, or None at its end."""
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    if length is None:
        raise ValueError("an LSP message without Content-Length")
    body: Message = json.loads(stream.read(length))
    return body


class LanguageServer:
    """yaml-language-server in a child process, with the answers an editor gives it.

    `settings` is the `yaml` section the server pulls (workspace/configuration), as VS Code's
    settings.json holds it."""

    def __init__(self, workspace: Path, settings: dict[str, Any]) -> None:
        self.workspace = workspace
        self.settings = settings
        # a file, not a pipe: a pipe nobody reads would block the server once full
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115  # closed by stop()
        self.process = subprocess.Popen(
            ["node", str(SERVER_SCRIPT), "--stdio"], cwd=workspace,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors)
        self.inbox: queue.Queue[Message | None] = queue.Queue()
        self.seen: list[Message] = []  # every message taken from the inbox, for failures
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        while (message := read_frame(self.process.stdout)) is not None:
            self.inbox.put(message)
        self.inbox.put(None)  # the server has exited

    def send(self, message: Message) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(frame({"jsonrpc": "2.0", **message}))
        self.process.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: Any) -> Any:
        """The result of a request, answering the server's own requests meanwhile."""
        self.next_id += 1
        request_id = self.next_id
        self.send({"id": request_id, "method": method, "params": params})
        answer = self.wait_for(lambda m: m.get("id") == request_id and "method" not in m,
                               f"the answer to {method}")
        if "error" in answer:
            raise AssertionError(f"{method} failed: {answer['error']}")
        return answer.get("result")

    def wait_for(self, wanted: Callable[[Message], bool], what: str) -> Message:
        """The first message from now on that is `wanted`; the server's requests are answered
        as they come."""
        deadline = time.monotonic() + DEADLINE_SECONDS
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = self.inbox.get(timeout=left)
            except queue.Empty:
                break
            if message is None:
                raise AssertionError(f"yaml-language-server exited while waiting for {what}: "
                                     f"{self.stderr()}")
            self.seen.append(message)
            if "method" in message and "id" in message:
                self.send({"id": message["id"], "result": self.answer(message)})
            if wanted(message):
                return message
        methods = [m.get("method", f"answer {m.get('id')}") for m in self.seen[-20:]]
        raise AssertionError(f"no {what} from yaml-language-server within "
                             f"{DEADLINE_SECONDS:.0f} s; the last messages: {methods}")

    def answer(self, request: Message) -> Any:
        """What an editor answers the server's requests: the settings it pulls; null to the
        rest (registrations, progress)."""
        if request["method"] == "workspace/configuration":
            return [self.settings if item.get("section") == "yaml" else None
                    for item in request["params"]["items"]]
        return None

    def start(self) -> None:
        """initialize and initialized, and wait until the server has pulled the settings."""
        root = self.workspace.as_uri()
        self.request("initialize", {
            "processId": None, "rootUri": root,
            "workspaceFolders": [{"uri": root, "name": self.workspace.name}],
            "capabilities": {
                "workspace": {"configuration": True},
                "textDocument": {
                    "hover": {"contentFormat": ["markdown", "plaintext"]},
                    "completion": {"completionItem": {"snippetSupport": True,
                                                      "documentationFormat": ["markdown"]}},
                    "publishDiagnostics": {}}}})
        self.notify("initialized", {})
        self.wait_for(lambda m: m.get("method") == "workspace/configuration",
                      "request for the settings")

    def open(self, path: Path, text: str | None = None) -> str:
        """didOpen of the file `path`, as an editor opens it, or with `text` in the place of
        what the file holds (a buffer not saved yet); its URI."""
        uri = path.as_uri()
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "yaml", "version": 1,
            "text": path.read_text() if text is None else text}})
        return uri

    def diagnostics(self, uri: str, wanted: Callable[[list[Message]], bool], what: str
                    ) -> list[Message]:
        """The first diagnostics the server publishes for `uri` that are `wanted` (it may
        publish more than once, as the settings and the schema arrive)."""
        message = self.wait_for(
            lambda m: m.get("method") == "textDocument/publishDiagnostics"
            and m["params"]["uri"] == uri and wanted(m["params"]["diagnostics"]), what)
        diagnostics: list[Message] = message["params"]["diagnostics"]
        return diagnostics

    def hover(self, uri: str, line: int, character: int) -> str:
        """The hover's text at a position (0-based), or "" where there is none."""
        result = self.request("textDocument/hover", {
            "textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
        if not result:
            return ""
        contents = result["contents"]
        return str(contents["value"] if isinstance(contents, dict) else contents)

    def completion(self, uri: str, line: int, character: int) -> list[Message]:
        result = self.request("textDocument/completion", {
            "textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
        items: list[Message] = (result or {}).get("items", []) if isinstance(result, dict) \
            else (result or [])
        return items

    def stop(self) -> None:
        """shutdown and exit, as an editor closes; killed if it does not exit."""
        try:
            if self.process.poll() is None:
                self.request("shutdown", None)
                self.notify("exit", None)
                self.process.wait(timeout=DEADLINE_SECONDS)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            for stream in (self.process.stdin, self.process.stdout):
                if stream is not None:
                    stream.close()
            self.errors.close()

    def stderr(self) -> str:
        """The end of what the server wrote on stderr."""
        self.errors.seek(0)
        return self.errors.read().decode(errors="replace")[-2000:]
