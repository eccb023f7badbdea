"""The local backend: runs in child processes of ``harness submit`` on this machine."""
