"""Where sopgraph keeps its state without SOPGRAPH_HOME: the nearest .sopgraph, below a ceiling."""

from __future__ import annotations

import tempfile

from sopgraph.graphs.home import home_dir


def test_a_projects_home_is_found_from_its_subfolders(tmp_path, monkeypatch):
    monkeypatch.delenv("SOPGRAPH_HOME", raising=False)
    (tmp_path / "project" / ".sopgraph").mkdir(parents=True)
    deeper = tmp_path / "project" / "a" / "b"
    deeper.mkdir(parents=True)
    monkeypatch.chdir(deeper)
    assert home_dir() == (tmp_path / "project" / ".sopgraph").resolve()


def test_a_stray_home_in_the_temporary_folder_captures_no_project(tmp_path, monkeypatch):
    monkeypatch.delenv("SOPGRAPH_HOME", raising=False)
    temp = tmp_path / "tmp"
    (temp / ".sopgraph").mkdir(parents=True)  # someone once ran sopgraph in /tmp
    project = temp / "project"
    project.mkdir()
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(temp))
    monkeypatch.chdir(project)
    assert home_dir() == (project / ".sopgraph").resolve()
    monkeypatch.chdir(temp)  # in the temporary folder itself, its own home is used
    assert home_dir() == (temp / ".sopgraph").resolve()


def test_sopgraph_home_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("SOPGRAPH_HOME", str(tmp_path / "elsewhere"))
    assert home_dir() == (tmp_path / "elsewhere").resolve()
