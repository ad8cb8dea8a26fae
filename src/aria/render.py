"""Deprecated location of the MIDI → audio renderer: use :mod:`aria.features.audio.render`.

Kept so that ``from aria.render import render_midi, render_file, midi_from_notes`` keeps working.
"""

from aria.features.audio.render import (
    Note,
    find_soundfont,
    midi_from_notes,
    render_file,
    render_midi,
)

__all__ = ["Note", "find_soundfont", "midi_from_notes", "render_file", "render_midi"]
