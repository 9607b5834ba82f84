"""torchlite.vision.datasets: torchvision's datasets with its constructor arguments and on-disk
layouts, so a folder prepared by torchvision works as it is.  download=True fetches from the
URLs torchvision lists (MD5-checked, unpacked, with a progress bar); without a network the
error names the URL and the folder to fill by hand."""
from .cifar import CIFAR10, CIFAR100
from .fakedata import FakeData
from .folder import DatasetFolder, ImageFolder
from .mnist import EMNIST, KMNIST, MNIST, FashionMNIST
from .svhn import SVHN
from .vision import VisionDataset

__all__ = ["MNIST", "FashionMNIST", "KMNIST", "EMNIST", "CIFAR10", "CIFAR100", "SVHN",
           "ImageFolder", "DatasetFolder", "FakeData", "VisionDataset"]
