"""The operator's own VMs through libvirt: domains read and driven with ``virsh``, programs run in guests
through the QEMU guest agent, and canary domains (vmio's guest shaped like a production domain).

virsh: Virsh(uri, runner), is_local(uri), DEFAULT_URI, AGENT_CHANNEL
domxml: parse(xml) -> DomainShape (disks as DiskShape, iothreads, vmio's canary marker)
agent: start / wait / run a guest program, check_ready(virsh, domain), guest_device(virsh, domain, disk),
    clock_offset(virsh, domain)
guest_fio: Domain (a measured domain, read and checked), run_together(jobs, timeout=, cwd=) -> FioOutput
initrd: the canary's initramfs (vmio's guest with qemu-ga laid over it)
canary: define(...), undefine(virsh, name), sweep(virsh), Shape, shape_like(disk, iothreads, domain)
balloon: read_domain(virsh, name) -> BalloonDomain, memstat, set_target, set_period (membal on domains)
"""
