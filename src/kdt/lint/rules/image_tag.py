"""Images have a tag other than `latest` (or a digest).

An untagged or `latest` image can change between the nodes of one job and
between restarts: ranks run different code, and a run cannot be reproduced.
"""
from ...findings import WARNING
from ..pods import all_containers

ID = "image-tag"
LEVEL = WARNING
BASIS = "policy"
WHY = ("The image runs; pinning it is a reproducibility choice.")


def tag_of(image: str) -> str | None:
    if "@" in image:
        return "@digest"
    last = image.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else None


def check(docs, ctx):
    for doc in docs:
        for pt, path, c in all_containers(doc):
            image = c.get("image")
            if not isinstance(image, str) or not image:
                continue
            tag = tag_of(image)
            if tag is None or tag == "latest":
                yield doc.finding(ID, f"image {image!r} has {'no tag' if tag is None else 'the latest tag'}: pin a version "
                                      "or digest", path + ("image",))
