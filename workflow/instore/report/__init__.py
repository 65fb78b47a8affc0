"""Reports: executed notebooks rendered to self-contained HTML, per site, compared, indexed."""
