"""This host: running programs (supervised, with timeouts), loopback ports, block devices and their safety."""
