"""Atari 2600 games through the Arcade Learning Environment (``pip install 'rlpyt[atari]'``)."""
