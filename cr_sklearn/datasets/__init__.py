"""Bundled tables (Pima, Wine Quality) and loaders for local text datasets."""

from ._base import get_data_home, load_pima, load_sst5, load_wine_quality, load_yelp5

__all__ = ["get_data_home", "load_pima", "load_sst5", "load_wine_quality", "load_yelp5"]
