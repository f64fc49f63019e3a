"""The simulated cluster: a node's truth and admission, its reports and when they are sent,
the pools a run starts from, the RPC legs between scheduler and node, and faults."""
