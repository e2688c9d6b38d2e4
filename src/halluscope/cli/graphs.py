"""Scene-graph inputs shared by the ``build`` commands: the formats they read and one loader for all of them.

Its own module so that ``build`` (which mounts ``build prove``) and ``build prove`` both import it, instead of
each other. Heavy imports stay inside :func:`load_graphs`; :func:`read_graphs` and :func:`default_images`
are the steps both commands take with them.
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


def read_graphs(path: Path, graph_format: GraphFormat, limit_images: int | None) -> dict[str, Any]:
    """:func:`load_graphs` for a command: an unreadable file, or one with no graph, ends it, saying why."""
    from halluscope.cli.common import fail
    from halluscope.scene.vg import SceneGraphFormatError

    graphs: dict[str, Any] = {}
    try:
        graphs = load_graphs(path, graph_format, limit_images)
    except (SceneGraphFormatError, ValueError, OSError) as error:
        fail(str(error))
    if not graphs:
        fail(f"no scene graphs read from {path}")
    return graphs


def default_images(images: Path | None, scene_graphs: Path, graph_format: GraphFormat) -> Path | None:
    """``--images`` as given; else, for Tri-HE, the ``images/`` folder beside its file, when there is one."""
    if images is None and graph_format is GraphFormat.TRI_HE:
        candidate = (scene_graphs if scene_graphs.is_dir() else scene_graphs.parent) / "images"
        return candidate if candidate.is_dir() else None
    return images
