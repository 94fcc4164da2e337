"""The buses ``vmio advise`` weighs (hitachi-nvme-2016's Fig. 9), apart from the guideline itself so that the
CLI's ``--help`` can name them without importing the guideline (its thresholds read the store's rows)."""

ADVISE_BUSES = ("virtio-blk", "virtio-scsi", "block", "vfio")
SHARED_BUSES = ("virtio-blk", "virtio-scsi")  # the buses a VM disk shares with other VMs' disks
