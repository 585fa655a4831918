"""Where inline runs live on disk: every name and the manifest's encoding, once.

::

    <cwd>/.j-cli/                       JCLI_DIR (README.md, .gitignore, CACHEDIR.TAG)
      outputs/                          Outputs.root
        .lock                           Outputs.lock: held to publish and to clean
        .staging/<run-id>/              Outputs.staged_dir: a run being written
          .writer.json                  WRITER_RECORD: who writes it (written first,
                                        removed once the manifest is in place)
        <run-id>/                       Outputs.run_dir: a published run
          manifest.json                 MANIFEST (written last, via MANIFEST_TMP)
          output-0001-0.png ...         payload files the manifest lists
      jobs/                             JOBS_DIR: background runs (jcli_sidecar.runs.jobs)
        <job-id>/
          job.json                      JOB_RECORD (rewritten whole: temp file plus rename)
          end.json                      JOB_END: the end state, written in place when
                                        job.json could not be (made at the start, full size)
          output.txt                    JOB_OUTPUT: the text captured, from its first byte
          output.<offset>.txt           later segments of it (a bounded tail is kept)
          read                          JOB_READ: left by the first read of its end (its
                                        mtime: when); retention removes only read jobs

The runtime dir's files (sidecar, embedded server, write-back locks) are named
in :mod:`jcli_sidecar.base.runtime`. Nothing here touches the disk.
"""

from __future__ import annotations

import os

from .boundedjson import loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "JCLI_DIR",
    "JOBS_DIR",
    "JOB_END",
    "JOB_OUTPUT",
    "JOB_READ",
    "JOB_RECORD",
    "LOCK_FILE",
    "MANAGED_BY",
    "MANIFEST",
    "MANIFEST_TMP",
    "OUTPUTS_DIR",
    "Outputs",
    "STAGING_DIR",
    "WRITER_RECORD",
    "encode_manifest",
    "manifest_path",
    "parse_manifest",
]

JCLI_DIR = ".j-cli"
#: The marker every run manifest carries; a directory without it is not ours.
MANAGED_BY = "j-cli"
MANIFEST = "manifest.json"
MANIFEST_TMP = ".manifest.json.tmp"
OUTPUTS_DIR = "outputs"
STAGING_DIR = ".staging"
#: In a staged run: the writer's ``ProcessRecord`` (``{"managed_by", "writer"}``),
#: written before any payload, so a cleaner can tell a live writer from a dead one.
WRITER_RECORD = ".writer.json"
LOCK_FILE = ".lock"
JOBS_DIR = "jobs"
JOB_RECORD = "job.json"
JOB_OUTPUT = "output.txt"
JOB_END = "end.json"
JOB_READ = "read"


class Outputs:
    """The paths of one ``.j-cli/outputs`` directory.

    Example:
        >>> out = Outputs.of_workspace("/srv/project")
        >>> (out.root, out.lock, out.run_dir("r1"), out.staged_dir("r1"))
        ('/srv/project/.j-cli/outputs', '/srv/project/.j-cli/outputs/.lock', '/srv/project/.j-cli/outputs/r1', '/srv/project/.j-cli/outputs/.staging/r1')
    """

    __slots__ = ("root",)

    def __init__(self, root: str) -> None:
        self.root = root

    @property
    def workspace(self) -> str:
        """The directory holding ``.j-cli`` (for a root made by :meth:`of_workspace`)."""
        return os.path.dirname(os.path.dirname(self.root))

    @classmethod
    def of_workspace(cls, cwd: str) -> Outputs:
        """``<cwd>/.j-cli/outputs``."""
        return cls(os.path.join(cwd, JCLI_DIR, OUTPUTS_DIR))

    @property
    def lock(self) -> str:
        return os.path.join(self.root, LOCK_FILE)

    @property
    def staging(self) -> str:
        return os.path.join(self.root, STAGING_DIR)

    def run_dir(self, run_id: str) -> str:
        return os.path.join(self.root, run_id)

    def staged_dir(self, run_id: str) -> str:
        return os.path.join(self.root, STAGING_DIR, run_id)

    @staticmethod
    def is_run_name(name: str) -> bool:
        """Whether a directory entry of ``root`` may be a published run (``.lock``, ``.staging`` are not)."""
        return not name.startswith(".")


def manifest_path(run_dir: str) -> str:
    """``<run_dir>/manifest.json``."""
    return os.path.join(run_dir, MANIFEST)


def encode_manifest(manifest: dict[str, Any]) -> bytes:
    """The bytes written for a manifest."""
    from .protocol import dump_json

    return dump_json(manifest)


def parse_manifest(raw: bytes) -> dict[str, Any]:
    """A manifest j-cli wrote, decoded; callers check the fields they rely on.

    Raises:
        ValueError: not JSON, nested too deeply, not an object, or not
            marked ``managed_by: j-cli``.
    """
    try:
        manifest = loads(raw)
    except UnicodeDecodeError as exc:
        raise ValueError("the manifest is not UTF-8") from exc
    if not isinstance(manifest, dict) or manifest.get("managed_by") != MANAGED_BY:
        raise ValueError("not a j-cli run manifest")
    return manifest
