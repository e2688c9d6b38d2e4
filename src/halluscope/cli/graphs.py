"""Scene-graph inputs shared by the ``build`` commands: the formats they read and one loader for all of them.

Its own module so that ``build`` (which mounts ``build prove``) and ``build prove`` both import it, instead of
each other. Heavy imports stay inside :func:`load_graphs`.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any


class GraphFormat(StrEnum):
    TRI_HE = "tri-he"
    GQA = "gqa"
    VG = "vg"
    SYNTHETIC = "synthetic"


def load_graphs(path: Path, graph_format: GraphFormat, limit_images: int | None = None) -> dict[str, Any]:
    """Scene graphs by image id from a Tri-HE file, a GQA sceneGraphs file, or Visual Genome files."""
    if graph_format is GraphFormat.TRI_HE:
        from halluscope.benchmarks.tri_he import load_scene_graphs, resolve_data_path

        graphs = load_scene_graphs(resolve_data_path(path))
        if limit_images is not None:
            graphs = dict(list(graphs.items())[:limit_images])
        return graphs
    if graph_format is GraphFormat.GQA:
        from halluscope.scene.vg import load_gqa_scene_graphs

        return load_gqa_scene_graphs(path, limit=limit_images)
    if graph_format is GraphFormat.SYNTHETIC:
        from halluscope.builders.synthetic import load_scenes

        scenes = load_scenes(path)
        return {i: s.graph() for i, s in list(scenes.items())[:limit_images]}
    from halluscope.scene.vg import load_vg_scene_graphs

    return load_vg_scene_graphs(path, limit=limit_images)
