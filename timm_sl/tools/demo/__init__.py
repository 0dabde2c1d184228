"""The embedded demo: an SL model and its baseline trained from scratch on scikit-learn's handwritten digits."""
from .digits import DigitsDataset, load_digits_split
from .train import DemoResult, run_demo
