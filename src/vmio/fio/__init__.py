"""fio: job files for every workload, running fio (locally or as a client of servers), and parsing its output."""
