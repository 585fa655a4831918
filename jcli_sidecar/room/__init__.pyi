"""Written by `make docs` (jcli.face_stubs) from the table in __init__.py: the face's names with their types."""
