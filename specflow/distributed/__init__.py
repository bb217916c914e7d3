"""The multi-process runtime on Ray: a master in the client process, one actor per task.

``Session(graph_def, cluster={"ps": 1, "worker": 2})`` runs a graph on a cluster; see
``cluster_spec.py`` (the cluster), ``placement.py`` (tasks for nodes, partitions by task),
``master.py`` (the client side of a step), ``worker.py`` (a task), ``remote_rendezvous.py``
(cross-task tensors and aborts) and ``engine.py`` (Ray). Importing this package does not import Ray.
"""

from .cluster_spec import ClusterSpec, as_cluster_spec, cluster_from_section, parse_cli
from .engine import INSTALL_HINT, Cluster

__all__ = ["Cluster", "ClusterSpec", "INSTALL_HINT", "as_cluster_spec", "cluster_from_section", "parse_cli"]
