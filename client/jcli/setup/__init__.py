"""``j-cli setup``: wire j-cli into agent hosts and git, editing files directly.

Every edit is idempotent, keeps everything outside j-cli's own entries byte
for byte (and the file's mode), and ``--remove`` takes out only j-cli's
entries. A malformed config is a coded error and the file is left alone.
"""

__all__: list[str] = []
