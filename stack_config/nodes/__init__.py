"""Node pools and the network: shapes and their topology, node boot, the VCN and its address plan."""
