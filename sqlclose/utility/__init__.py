"""Utility: how much information a release loses (Mauger et al. 2023's unified metric model)."""

from .information_loss import (
    METRICS,
    Metric,
    Tree,
    class_l1_closeness,
    class_l_diversity,
    custom_metric,
    full_domain_nodes,
    generalized_percent,
    l1_closeness_value,
    l_diversity_value,
    mean_alteration,
    metric,
    multidimensional_nodes,
    nauc,
    node_class_histograms,
    root_percent,
    trees,
    w1,
    w2,
)

__all__ = [
    "METRICS", "Metric", "Tree", "class_l1_closeness", "class_l_diversity", "custom_metric", "full_domain_nodes",
    "generalized_percent", "l1_closeness_value", "l_diversity_value", "mean_alteration", "metric",
    "multidimensional_nodes", "nauc", "node_class_histograms", "root_percent", "trees", "w1", "w2",
]
