"""Dataset preparation helpers."""
from .tiny_imagenet import prepare_tiny_imagenet_train, prepare_tiny_imagenet_val
