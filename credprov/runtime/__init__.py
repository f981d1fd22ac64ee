"""Container runtimes the image path drives (the CRI client lives in ``cri``)."""
