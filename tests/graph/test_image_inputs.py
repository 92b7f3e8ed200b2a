"""Image inputs: real files checked once, with a clear error for each way they go wrong."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from PIL import Image

from mia.graph.images import MAX_IMAGE_BYTES, ImageError, load_image

from .sample_images import CHINA


def test_real_photo_loads_with_its_type_and_size() -> None:
    img = load_image(CHINA)
    assert (img.mime_type, img.width, img.height) == ("image/jpeg", 640, 427)
    block = img.content_block()
    assert block["type"] == "image" and block["mime_type"] == "image/jpeg"
    assert base64.b64decode(block["base64"]) == CHINA.read_bytes()
    assert load_image(str(CHINA)).data == load_image(CHINA.read_bytes()).data  # path text and bytes agree
    assert load_image(img.data_url()).data == img.data  # a data URL round-trips


def test_remote_url_is_passed_through_not_downloaded() -> None:
    img = load_image("https://example.org/cat.png")
    assert img.is_remote and img.content_block() == {"type": "image", "url": "https://example.org/cat.png"}


@pytest.mark.parametrize(
    "value, message",
    [
        ("/no/such/picture.png", "cannot read image"),
        ("ftp://example.org/x.png", "unsupported image URL scheme"),
        ("data:image/png,notbase64", "must be base64"),
        ("data:image/png;base64,@@@", "not valid base64"),
        (b"", "is empty"),
        (b"GIF89a but not really", "not a readable image"),
        ("", "must be a path"),
        (42, "must be a path"),
    ],
)
def test_bad_inputs_give_one_line_errors(value, message) -> None:
    with pytest.raises(ImageError, match=message) as err:
        load_image(value)
    assert "\n" not in str(err.value)


def test_text_file_and_truncated_photo_are_refused(tmp_path: Path) -> None:
    text = tmp_path / "notes.png"
    text.write_text("not an image at all")
    with pytest.raises(ImageError, match="not a readable image"):
        load_image(text)
    cut = tmp_path / "cut.jpg"
    cut.write_bytes(CHINA.read_bytes()[:5000])
    with pytest.raises(ImageError, match="not a readable image"):
        load_image(cut)
    with pytest.raises(ImageError, match="is not a file"):
        load_image(tmp_path)


def test_oversized_images_are_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.jpg"
    with big.open("wb") as fh:  # refused from its size alone: never read into memory
        fh.truncate(MAX_IMAGE_BYTES + 1)
    with pytest.raises(ImageError, match="over the 21 MB limit|over the 20 MB limit"):
        load_image(big)
    wide = tmp_path / "wide.png"
    Image.new("L", (9000, 2)).save(wide)  # a few bytes, but 9000 px wide
    with pytest.raises(ImageError, match="9000x2 px, over the 8192 px limit"):
        load_image(wide)
    buf = io.BytesIO()
    Image.new("RGB", (8, 8)).save(buf, format="BMP")
    with pytest.raises(ImageError, match="is BMP; supported"):
        load_image(buf.getvalue())


def test_cli_refuses_bad_images_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from mia.app.cli import app

    monkeypatch.delenv("MIA_CAPTIONER_MODEL", raising=False)
    runner = CliRunner()
    base = ["ask", "Where is this?", "--data-dir", str(tmp_path)]
    cases = [
        (["--image", str(tmp_path / "missing.png")], "cannot read image"),
        (["--image", str(CHINA)], "--image needs --caption or a vision model"),
    ]
    big = tmp_path / "huge.png"
    with big.open("wb") as fh:
        fh.truncate(MAX_IMAGE_BYTES + 1)
    cases.append((["--image", str(big), "--caption", "x"], "over the"))
    for extra, message in cases:
        res = runner.invoke(app, base + extra)
        assert res.exit_code == 2, res.output
        lines = [line for line in res.output.splitlines() if line.strip()]
        assert len(lines) == 1 and message in lines[0], res.output


def test_dataset_image_fields_reach_the_graph_input(tmp_path: Path) -> None:
    import json

    from mia.app.evaluation.datasets import read_examples
    from mia.app.evaluation.runner import GraphRunner

    (tmp_path / "pics").mkdir()
    (tmp_path / "pics" / "temple.jpg").write_bytes(CHINA.read_bytes())
    rows = [
        {"id": "1", "question": "Where is this temple?", "answer": "Jiangxi", "image": "pics/temple.jpg"},
        {
            "id": "2",
            "question": "What is shown?",
            "answer": "a flower",
            "caption": "A red flower.",
            "image": "https://example.org/flower.jpg",
        },
        {"id": "3", "question": "Text only?", "answer": "yes"},
    ]
    data = tmp_path / "vqa.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    examples = read_examples(data)
    assert examples[0].image == str(tmp_path / "pics" / "temple.jpg")  # relative to the dataset file
    runner = GraphRunner(graph=None, context=None, setting="open")
    states = [runner.input_state(ex) for ex in examples]
    assert load_image(states[0]["image"]).data == CHINA.read_bytes() and "caption" not in states[0]
    assert states[1]["image"] == "https://example.org/flower.jpg" and states[1]["caption"] == "A red flower."
    assert "image" not in states[2] and "caption" not in states[2]
