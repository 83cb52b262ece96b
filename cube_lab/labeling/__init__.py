"""Data labeling: datasets of images or texts, labeling projects with a shared task queue,
review, model pre-labels and standard exports (COCO, YOLO, Label Studio, CSV / JSONL).

``dataset_service.DatasetService`` and ``service.LabelingService`` are the entry points;
they are imported from there (the workspace builds them) so importing this package is cheap.
"""
