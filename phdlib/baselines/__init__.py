"""Baselines of the paper (section 5.3) and our additions: MF (SGD, ALS), MFmean/MFmedian,
DCF, CCCF and sanity baselines. One module per method family; see :mod:`phdlib.methods`."""
