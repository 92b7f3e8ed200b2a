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


@pytest.mark.parametrize("value, message", [
    ("/no/such/picture.png", "cannot read image"),
    ("ftp://example.org/x.png", "unsupported image URL scheme"),
    ("data:image/png,notbase64", "must be base64"),
    ("data:image/png;base64,@@@", "not valid base64"),
    (b"", "is empty"),
    (b"GIF89a but not really", "not a readable image"),
    ("", "must be a path"),
    (42, "must be a path"),
])
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
