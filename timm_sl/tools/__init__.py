"""Dataset preparation helpers."""
from .svhn import prepare_svhn, read_svhn_mat
from .tiny_imagenet import prepare_tiny_imagenet_train, prepare_tiny_imagenet_val
