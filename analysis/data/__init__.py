"""Data and tasks: in-context regression, language corpora, associative recall and the other tasks a tiny
network is trained or probed on, with their samplers."""
