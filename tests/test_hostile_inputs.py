"""Hostile inputs at ingest: a resumed run sees every change to its inputs and equals a fresh run on them,
a touched but unchanged input redoes nothing after ingest, an image must be a regular JPEG file in RGB or
greyscale, and OS errors name their real cause (an input that cannot be read, a read-only file system).

Each run is a small copy of the demo world given as outside inputs (a scene-graph file and an images
folder), run through the real stages up to `paths` (or `images`, which reads the pixels)."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest
from PIL import Image

from hardneg.cli import main
from hardneg.core.config import load_config
from hardneg.core.demo.world import DemoWorld, build_demo_world
from hardneg.core.errors import HardnegError
from hardneg.core.gqa.run_inputs import prepare_run
from hardneg.core.io import os_error_message, read_jsonl
from hardneg.core.runner.stage import SUMMARY, Run, Stage
from hardneg.flows.pipeline import STAGES
from hardneg.flows.request import check_output

NAMES = [s.name for s in STAGES]
UP_TO_PATHS = STAGES[: NAMES.index("paths") + 1]
UP_TO_IMAGES = STAGES[: NAMES.index("images") + 1]
# few positives an image, one flip or recolour each: the image stages in seconds, their output still made of pixels
SMALL = {
    "paths": {"max_per_image": 2},
    "language": {"negatives_per_positive": 1},
    "images": {"types": ["flip", "replace_attribute"], "candidates": 1},
}
NOT_OUTPUTS = {SUMMARY, "_fingerprint"}  # summaries and markers hold timings; every other file is output


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> DemoWorld:
    return build_demo_world(tmp_path_factory.mktemp("world"), n_scenes=4, seed=0)


@pytest.fixture
def inputs(world: DemoWorld, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the demo world as a run's outside inputs: (scene-graph file, images folder)."""
    images = tmp_path / "in" / "images"
    shutil.copytree(world.images, images)
    graphs = tmp_path / "in" / "sceneGraphs.json"
    shutil.copyfile(world.scene_graphs, graphs)
    return graphs, images


def ids(graphs: Path) -> list[str]:
    return sorted(orjson.loads(graphs.read_bytes()))


def run(graphs: Path, images: Path, root: Path, stages: tuple[Stage, ...] = UP_TO_PATHS) -> Run:
    """Run (or resume) `stages` over the inputs in `root`."""
    cfg = load_config(None, {**SMALL, "inputs": {"scene_graphs": str(graphs), "images": str(images)}})
    for s in stages:
        s.validate(cfg)
    prepare_run(cfg, root)
    r = Run(root, cfg, stages)
    for name in r.order:
        r.run_stage(name)
    return r


def outputs(root: Path) -> dict[str, bytes]:
    """Every file the stages wrote (rows, rejects, generated images), by path in the run folder."""
    folders = [d for d in (root / "work").iterdir() if d.is_dir()] + [root / "images"]
    return {
        str(p.relative_to(root)): p.read_bytes()
        for folder in folders
        for p in folder.rglob("*")
        if p.is_file() and p.name not in NOT_OUTPUTS and "_done" not in p.parts
    }


def assert_resume_equals_fresh(graphs: Path, images: Path, resumed: Path, tmp_path: Path, stages=UP_TO_PATHS) -> None:
    run(graphs, images, resumed, stages)
    fresh = tmp_path / "fresh"
    run(graphs, images, fresh, stages)
    got, want = outputs(resumed), outputs(fresh)
    assert sorted(got) == sorted(want)
    assert [k for k in want if got[k] != want[k]] == []


def ingest_rejects(root: Path) -> dict[str, str]:
    return {r["image_id"]: r["reason"] for r in read_jsonl(root / "work" / "ingest" / "_rejects" / "all.jsonl")}


def kept(root: Path) -> list[str]:
    return [r["image_id"] for p in sorted((root / "work" / "ingest").glob("graphs-*.jsonl")) for r in read_jsonl(p)]


def jpeg(size: tuple[int, int], mode: str = "RGB", color: object = (200, 30, 30)) -> bytes:
    from io import BytesIO

    buf = BytesIO()
    Image.new(mode, size, color).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def image_size(path: Path) -> tuple[int, int]:
    with Image.open(path) as im:
        return im.size


# -- a resumed run sees every change to its inputs ----------------------------------------------------------


def test_an_image_replaced_by_one_of_another_size_is_seen_on_resume(inputs, tmp_path):
    graphs, images = inputs
    root = tmp_path / "run"
    run(graphs, images, root)
    victim = ids(graphs)[0]
    w, h = image_size(images / f"{victim}.jpg")
    (images / f"{victim}.jpg").write_bytes(jpeg((w + 5, h)))
    assert_resume_equals_fresh(graphs, images, root, tmp_path)
    assert "size" in ingest_rejects(root)[victim]


def test_a_repaired_truncated_image_is_seen_on_resume(inputs, tmp_path):
    graphs, images = inputs
    victim = images / f"{ids(graphs)[0]}.jpg"
    good = victim.read_bytes()
    victim.write_bytes(good[: len(good) // 2])
    root = tmp_path / "run"
    run(graphs, images, root)
    assert ids(graphs)[0] in ingest_rejects(root)
    victim.write_bytes(good)
    assert_resume_equals_fresh(graphs, images, root, tmp_path)
    assert ids(graphs)[0] in kept(root)


def test_a_pixel_change_of_the_same_size_with_its_mtime_restored_redoes_the_image_stages(inputs, tmp_path):
    """The images stage cuts candidates out of the pixels: every file it made from the old ones is stale."""
    graphs, images = inputs
    root = tmp_path / "run"
    run(graphs, images, root, UP_TO_IMAGES)
    made_from = sorted(p.name.split("_")[0] for p in (root / "images").iterdir())  # demo ids are plain
    victim = images / f"{made_from[0]}.jpg"
    st = victim.stat()
    with Image.open(victim) as im:
        Image.eval(im.convert("RGB"), lambda v: 255 - v).save(victim, "JPEG", quality=90)
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert_resume_equals_fresh(graphs, images, root, tmp_path, UP_TO_IMAGES)


def test_a_graph_edit_of_the_same_size_with_its_mtime_restored_is_seen_on_resume(inputs, tmp_path):
    graphs, images = inputs
    root = tmp_path / "run"
    run(graphs, images, root)
    data = graphs.read_bytes()
    name = orjson.loads(data)[ids(graphs)[0]]["objects"]
    first = next(iter(name.values()))["name"]
    edited = data.replace(f'"name":"{first}"'.encode(), f'"name":"{first[::-1]}"'.encode(), 1)
    assert edited != data and len(edited) == len(data)
    st = graphs.stat()
    graphs.write_bytes(edited)
    os.utime(graphs, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert graphs.stat().st_size == st.st_size and graphs.stat().st_mtime_ns == st.st_mtime_ns
    assert_resume_equals_fresh(graphs, images, root, tmp_path)


def test_touched_relinked_or_copied_but_unchanged_inputs_redo_nothing(inputs, tmp_path):
    """Fingerprints are by content: a new mtime, ctime, inode or link count is no change. (A hard link to an
    input, as another tool or an earlier version of the write stage made, changes its ctime.)"""
    graphs, images = inputs
    root = tmp_path / "run"
    run(graphs, images, root)
    work = root / "work"
    before = {s.name: (work / s.name / SUMMARY).read_bytes() for s in UP_TO_PATHS}
    linked = tmp_path / "links"
    linked.mkdir()
    for f in [graphs, *images.iterdir()]:
        f.touch()
        os.link(f, linked / f"{f.name}.{f.parent.name}")
    for f in list(images.iterdir())[:3]:  # a copy back over the original: new inode, same bytes
        data = f.read_bytes()
        f.unlink()
        f.write_bytes(data)
    r = run(graphs, images, root)
    after = {s.name: (work / s.name / SUMMARY).read_bytes() for s in UP_TO_PATHS}
    assert after == before, "a stage was redone although no input's content changed"
    assert all(r.is_complete(name) for name in r.order)


# -- what an image must be ----------------------------------------------------------------------------------


def test_a_symlinked_image_is_rejected(inputs, tmp_path):
    """A link could point anywhere (and later stages would read and link its target): refused."""
    graphs, images = inputs
    victim = ids(graphs)[0]
    outside = tmp_path / "elsewhere.jpg"
    (images / f"{victim}.jpg").rename(outside)
    (images / f"{victim}.jpg").symlink_to(outside)
    root = tmp_path / "run"
    run(graphs, images, root, STAGES[:1])
    assert "symlink" in ingest_rejects(root)[victim]
    assert victim not in kept(root)


def test_a_png_named_jpg_is_rejected(inputs, tmp_path):
    graphs, images = inputs
    victim = ids(graphs)[0]
    path = images / f"{victim}.jpg"
    with Image.open(path) as im:
        im.save(path, "PNG")  # same pixels and size, PNG bytes
    root = tmp_path / "run"
    run(graphs, images, root, STAGES[:1])
    assert "not a JPEG (PNG data)" in ingest_rejects(root)[victim]


def test_a_cmyk_jpeg_is_rejected_and_a_greyscale_one_kept(inputs, tmp_path):
    """Greyscale is kept (every reader converts to RGB); CMYK is refused: converting it without its colour
    profile shifts colours, and colour words are what many negatives change."""
    graphs, images = inputs
    cmyk, grey = ids(graphs)[:2]
    for image_id, mode in ((cmyk, "CMYK"), (grey, "L")):
        path = images / f"{image_id}.jpg"
        with Image.open(path) as im:
            im.convert(mode).save(path, "JPEG", quality=90)
    root = tmp_path / "run"
    run(graphs, images, root, STAGES[:1])
    assert "CMYK" in ingest_rejects(root)[cmyk]
    assert grey in kept(root)


# -- OS errors name their real cause ------------------------------------------------------------------------


def test_an_os_error_on_an_input_never_suggests_another_output():
    """A permission error on a path outside the run folder is about an input: --output would not help."""
    e = PermissionError(errno.EACCES, "Permission denied", "/data/gqa/images/1.jpg")
    msg = os_error_message(e, Path("/tmp/outputs/run"))
    assert "/data/gqa/images/1.jpg" in msg and "--output" not in msg and "readable" in msg
    inside = os_error_message(
        PermissionError(errno.EACCES, "Permission denied", "/tmp/outputs/run/work/x"), Path("/tmp/outputs/run")
    )
    assert "--output" in inside
    ro = os_error_message(
        OSError(errno.EROFS, "Read-only file system", "/tmp/outputs/run/work"), Path("/tmp/outputs/run")
    )
    assert "read-only" in ro and "/tmp/outputs/run/work" in ro


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 000 file")
def test_an_unreadable_image_is_named_as_an_input(inputs, tmp_path, capsys):
    graphs, images = inputs
    victim = images / f"{ids(graphs)[0]}.jpg"
    victim.chmod(0)
    try:
        rc = main(
            [
                "run",
                "--no-prefect",
                "--scene-graphs",
                str(graphs),
                "--images",
                str(images),
                "--output",
                str(tmp_path / "run"),
            ]
        )
    finally:
        victim.chmod(0o644)
    err = capsys.readouterr().err
    assert rc == 2 and str(victim) in err and "input" in err and "--output" not in err, err


def test_a_read_only_file_system_for_the_output_is_named_as_such(tmp_path):
    """EROFS is no permission problem: the line says the file system is read-only (root: a tmpfs mounted
    read-only; otherwise a chmod 0o555 folder must still read as a permission problem)."""
    folder = tmp_path / "mnt"
    folder.mkdir()
    if os.geteuid() == 0:
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)]).returncode != 0:
            pytest.skip("cannot mount a tmpfs")
        try:
            with pytest.raises(HardnegError, match="read-only file system") as e:
                check_output(folder / "run")
        finally:
            subprocess.run(["umount", "-l", str(folder)])
        assert "permission" not in str(e.value) and str(folder) in str(e.value)
    else:
        folder.chmod(0o555)
        try:
            with pytest.raises(HardnegError, match="permission denied"):
                check_output(folder / "run")
        finally:
            folder.chmod(0o755)


def test_an_input_photo_edited_in_place_reaches_no_published_file(inputs, tmp_path):
    """Failed before: `data/` hard-linked the input photos, so an edit of an input in place changed an
    earlier run's published dataset too. Now the run's photos are its own copies; the next run sees the
    edit (by content) and redoes what depends on it."""
    graphs, images = inputs
    root = tmp_path / "run"
    run(graphs, images, root, STAGES)
    published = sorted((root / "data").rglob("*.jpg"))
    assert published
    before = {p: p.read_bytes() for p in published}
    victim = images / published[0].name
    with victim.open("r+b") as f:  # in place: the same inode, other bytes
        f.seek(200)
        f.write(b"\x00" * 64)
    assert {p: p.read_bytes() for p in published} == before
    r = Run(root, load_config(None, {**SMALL, "inputs": {"scene_graphs": str(graphs), "images": str(images)}}), STAGES)
    assert not r.is_complete("ingest") and "changed" in (r.stale("ingest") or "")


def test_a_second_first_run_is_told_who_holds_the_folder(tmp_path, capsys):
    """Failed before (2 of 14 races): a run that found the folder another first run had just made was told
    it "is not a hardneg run (it holds 'work')" instead of who was writing it."""
    from hardneg.core.runner.lock import RunLock

    root = tmp_path / "run"
    with RunLock(root, "the first run"):  # it holds the lock and has written nothing else yet
        assert main(["run", "--no-prefect", "--output", str(root)]) == 2
    err = capsys.readouterr().err
    assert "is being written by the first run (pid" in err and "not a hardneg run" not in err
