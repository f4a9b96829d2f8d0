"""The one scripted chat model the tests share (LangChain's fakes raise on ``bind_tools``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class ScriptedChatModel(FakeMessagesListChatModel):
    """Replies from a list (in order, the last one repeating) or from ``responder(messages)``.

    ``bind_tools`` returns the model itself so tool-calling code paths run; every prompt it
    received is kept in ``seen`` and the tools bound in ``bound_tools`` for assertions.
    Usage metadata counts whitespace-separated words so token accounting can be tested.

    Example:
        >>> m = ScriptedChatModel(responses=[AIMessage("print(1)")])
        >>> m.bind_tools([]).invoke("hi").content
        'print(1)'
    """

    responses: list[BaseMessage] = []
    responder: Callable[[list[BaseMessage]], BaseMessage] | None = None
    seen: list[list[BaseMessage]] = []
    bound_tools: list[Any] = []

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        self.bound_tools = list(tools)
        return self

    def _generate(
        self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs: Any
    ) -> ChatResult:
        self.seen.append(list(messages))
        if self.responder is not None:
            reply = self.responder(messages)
        else:
            reply = self.responses[min(self.i, len(self.responses) - 1)]
            self.i += 1
        if isinstance(reply, AIMessage) and reply.usage_metadata is None:
            n_in = sum(len(str(m.content).split()) for m in messages)
            n_out = max(1, len(str(reply.content).split()))
            reply = reply.model_copy(
                update={
                    "usage_metadata": {
                        "input_tokens": n_in,
                        "output_tokens": n_out,
                        "total_tokens": n_in + n_out,
                    }
                }
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])

    @property
    def _llm_type(self) -> str:
        return "scripted-chat-model"
