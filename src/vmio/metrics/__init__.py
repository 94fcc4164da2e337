"""Samplers over /proc run beside each measurement: block devices, host CPU, QEMU threads."""
