"""sopgraph's settings: which model to use and how to reach it.

Values come, highest first, from keyword arguments, ``SOPGRAPH_*`` environment
variables, a config file (``SOPGRAPH_CONFIG`` or ``./sopgraph.toml``), then defaults.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import SecretStr, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
    YamlConfigSettingsSource,
)

from sopgraph.nodes.models._settings_error import SettingsError
from sopgraph.nodes.models._tool_format import DEFAULT_TOOL_FORMAT, ToolFormat

Provider = Literal["bedrock", "openai", "ollama", "local"]
PROVIDERS: tuple[Provider, ...] = ("bedrock", "openai", "ollama", "local")

DEFAULT_CONFIG_FILE = Path("sopgraph.toml")
OLLAMA_BASE_URL = "http://127.0.0.1:11434/v1"

_MODEL_HELP = (
    "set SOPGRAPH_MODEL (or `model` in sopgraph.toml) to `bedrock:<model id>`, "
    "`openai:<name>` with SOPGRAPH_BASE_URL, `ollama:<name>`, `local` or `local:smollm2`"
)


class Settings(BaseSettings):
    """Model provider settings, shared by LangChain and DSPy.

    Example:
        >>> s = Settings(model="openai:qwen2.5-7b", base_url="http://127.0.0.1:8000/v1")
        >>> s.provider, s.model_name
        ('openai', 'qwen2.5-7b')
    """

    model_config = SettingsConfigDict(
        env_prefix="SOPGRAPH_",
        extra="forbid",
        validate_default=True,
    )

    config: Path | None = None
    """Config file (TOML, or YAML by suffix); default ``./sopgraph.toml`` if present."""

    model: str = ""
    """``provider:name`` (``bedrock``, ``openai``, ``ollama``), ``local`` (Qwen2.5-Coder-1.5B) or
    ``local:smollm2``; empty = no model."""
    base_url: str | None = None
    """OpenAI-compatible endpoint, e.g. ``http://127.0.0.1:8000/v1`` (vLLM)."""
    api_key: SecretStr | None = None
    """Key for the OpenAI-compatible endpoint; falls back to ``OPENAI_API_KEY``."""
    temperature: float = 0.0
    max_tokens: int | None = None
    timeout: float = 120.0
    """Seconds for one model request."""

    aws_region: str | None = None
    """Bedrock region; falls back to ``AWS_REGION`` / ``AWS_DEFAULT_REGION`` / the profile."""
    aws_profile: str | None = None
    check_credentials: bool = True
    """Check credentials before building a model (off for e.g. an EC2 instance role)."""

    codeact_samples: int = 3
    """Best of N in the CodeAct sub-agent: a code reply whose code fails or reads no data has
    up to this many other replies drawn (temperature 0.5, a seed each), and the first whose
    code runs and reads data takes its place; 0 turns it off (``nodes/codeact_loop.py``)."""

    local_port: int = 0
    """Port of the local llama.cpp server; 0 picks a free one."""
    local_n_ctx: int = 8192
    """Context of the local model: a CodeAct node of six turns needs about 5,000 tokens."""
    local_n_threads: int = 1
    """Threads for the local model. 1 beats 2 on a 2-core machine that runs anything else:
    llama.cpp's spinning thread barrier is ~30x slower when a core is taken."""
    local_startup_timeout: float = 120.0
    local_tool_format: ToolFormat = DEFAULT_TOOL_FORMAT
    """How ``local`` (Qwen) is asked for tool calls: ``hermes`` (the GGUF's own template,
    ``<tool_call>`` replies parsed by sopgraph), ``json-schema`` or llama-cpp-python's
    ``chatml-function-calling`` (``nodes/models/_tool_format.py``, measured in
    ``evals/model_results/toolcall_formats.json``)."""

    def __init__(self, **values: Any) -> None:
        config = _config_path(values.get("config"))
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise _settings_error(exc, config) from None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        init_kwargs = getattr(init_settings, "init_kwargs", {})
        path = _config_path(init_kwargs.get("config"))
        if path is None:
            return init_settings, env_settings
        return init_settings, env_settings, _file_source(settings_cls, path)

    @property
    def has_model(self) -> bool:
        """Whether a model is configured at all (LLM-only nodes need one)."""
        return bool(self.model.strip())

    @property
    def provider(self) -> Provider:
        """The provider part of ``model``; raises SettingsError if it is not one we know."""
        return self._split()[0]

    @property
    def model_name(self) -> str:
        """The model part of ``model`` (``local`` has a fixed name)."""
        return self._split()[1]

    def _split(self) -> tuple[Provider, str]:
        model = self.model.strip()
        if not model:
            raise SettingsError(f"no model configured: {_MODEL_HELP}")
        if model == "local":
            return "local", "qwen"
        provider, sep, name = model.partition(":")
        if not sep or provider not in PROVIDERS or not name:
            raise SettingsError(
                f"model {model!r} is not `provider:name` with a provider of "
                f"{', '.join(PROVIDERS)}: {_MODEL_HELP}"
            )
        return provider, name  # type: ignore[return-value]

    def resolved_api_key(self) -> str | None:
        """``api_key``, else ``OPENAI_API_KEY`` from the environment."""
        if self.api_key is not None:
            return self.api_key.get_secret_value()
        return os.environ.get("OPENAI_API_KEY") or None

    def resolved_aws_region(self) -> str | None:
        """``aws_region``, else the region boto would use (environment or profile)."""
        if self.aws_region:
            return self.aws_region
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if region:
            return region
        import botocore.session

        try:
            return botocore.session.Session(profile=self.aws_profile).get_config_variable("region")
        except Exception:  # an unknown profile: reported by check_model
            return None

    def check_model(self) -> None:
        """Raise SettingsError if the configured model cannot be reached as configured.

        Only looks at local configuration (environment, files, installed packages):
        it never calls the provider.
        """
        provider, name = self._split()
        if provider == "bedrock":
            self._check_bedrock()
        elif provider == "openai":
            if not self.base_url and not self.resolved_api_key():
                raise SettingsError(
                    f"model 'openai:{name}' has no endpoint: set SOPGRAPH_BASE_URL "
                    "(or `base_url` in sopgraph.toml) to an OpenAI-compatible server such as "
                    "http://127.0.0.1:8000/v1, or OPENAI_API_KEY for api.openai.com"
                )
        elif provider == "local":
            from sopgraph.nodes.models._local_models import ensure_installed, local_model

            local_model(name)  # an unknown name is a SettingsError
            replaying = os.environ.get("SOPGRAPH_CASSETTE") and (
                os.environ.get("SOPGRAPH_CASSETTE_MODE", "replay").strip() == "replay"
            )
            if not self.base_url and not replaying:  # a replay never starts the server
                ensure_installed(name)

    def _check_bedrock(self) -> None:
        if not self.check_credentials:
            return
        import botocore.credentials
        import botocore.exceptions
        import botocore.session

        where = f"profile {self.aws_profile!r}" if self.aws_profile else "the environment"
        try:
            session = botocore.session.Session(profile=self.aws_profile)
            resolver = botocore.credentials.create_credential_resolver(session)
            # Instance metadata means a network call with timeouts; an EC2 role
            # user sets check_credentials=false instead.
            resolver.remove("iam-role")
            credentials = resolver.load_credentials()
        except botocore.exceptions.BotoCoreError as exc:
            raise SettingsError(f"Bedrock credentials from {where} are unusable: {exc}") from None
        if credentials is None and not os.environ.get("AWS_BEARER_TOKEN_BEDROCK"):
            raise SettingsError(
                f"model {self.model!r} needs AWS credentials but none were found in {where}: "
                "set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE "
                "(or SOPGRAPH_CHECK_CREDENTIALS=false for an instance role)"
            )
        if not self.resolved_aws_region():
            raise SettingsError(
                f"model {self.model!r} needs an AWS region: set SOPGRAPH_AWS_REGION "
                "or AWS_REGION (e.g. us-east-1)"
            )


def _config_path(explicit: Any) -> Path | None:
    if explicit is not None:
        path, origin = Path(explicit), "the `config` argument"
    elif env := os.environ.get("SOPGRAPH_CONFIG"):
        path, origin = Path(env), "SOPGRAPH_CONFIG"
    elif DEFAULT_CONFIG_FILE.is_file():
        return DEFAULT_CONFIG_FILE
    else:
        return None
    if not path.is_file():
        raise SettingsError(
            f"config file {path} (from {origin}) does not exist: create it or fix the path"
        )
    return path


def _file_source(settings_cls: type[BaseSettings], path: Path) -> PydanticBaseSettingsSource:
    import yaml

    suffix = path.suffix.lower()
    if suffix not in (".toml", ".yaml", ".yml"):
        raise SettingsError(
            f"config file {path} must end in .toml, .yaml or .yml, not {suffix or 'nothing'}"
        )
    try:
        if suffix == ".toml":
            return TomlConfigSettingsSource(settings_cls, toml_file=path)
        return YamlConfigSettingsSource(settings_cls, yaml_file=path)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        detail = str(exc).splitlines()[0]
        raise SettingsError(f"config file {path} is not valid {suffix[1:]}: {detail}") from None
    except (TypeError, ValueError):  # a YAML list or scalar instead of a mapping
        raise SettingsError(f"config file {path} must hold a mapping of settings") from None


def _settings_error(exc: ValidationError, config: Path | None) -> SettingsError:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"]) or "settings"
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    if err["type"] == "extra_forbidden":
        known = ", ".join(name for name in Settings.model_fields if name != "config")
        where = f" in the config file {config}" if config is not None else ""
        return SettingsError(f"unknown setting {field!r}{where}{more}; known settings: {known}")
    where = f"SOPGRAPH_{field.upper()}"
    if config is not None:
        where += f" or the config file {config}"
    what = f"invalid setting {field}={err.get('input')!r}: {err['msg']}"
    return SettingsError(f"{what}{more}; fix it in {where}")
