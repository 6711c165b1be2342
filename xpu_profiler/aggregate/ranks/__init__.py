"""Many ranks: steps aligned across ranks, the parallel layout, collectives matched across ranks, communication and how much compute hides."""
