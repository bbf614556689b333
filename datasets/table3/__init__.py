"""The demo data (Table 3 of Li et al.), shipped inside the package as ``sqlclose.demo`` (see pyproject.toml)."""
