"""Where I/O runs: the bare host, QEMU VMs, remote fio servers, RBD images."""
