"""dstore: bitisle-dstore-2014's evaluation of replicated VM storage on a real Ceph cluster, verdicts, and a model."""
