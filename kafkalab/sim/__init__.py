"""The simulation: event loop, network, trace and the Cluster facade learners use."""
